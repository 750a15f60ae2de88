// Single-core bandwidth: y = a*x + b (one read stream, one write stream), working sets of given size.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){
  size_t sizes[]={64<<10,256<<10,512<<10,1<<20,2<<20,4<<20,8<<20,16<<20,64<<20};
  for(int s=0;s<9;s++){
    size_t n=sizes[s]/8; // half for x, half for y
    float*x=aligned_alloc(64,n*4),*y=aligned_alloc(64,n*4);
    for(size_t i=0;i<n;i++){x[i]=i;y[i]=0;}
    double best=1e9;
    for(int r=0;r<7;r++){
      int reps=(int)(256e6/sizes[s])+1;
      double t0=now();
      for(int k=0;k<reps;k++){ for(size_t i=0;i<n;i++) y[i]=x[i]*1.0001f+0.5f; __asm__ volatile(""::"r"(y):"memory");}
      double t=(now()-t0)/reps; if(t<best)best=t;
    }
    printf("%8zu KiB total: %.1f GB/s (read+write)\n",sizes[s]>>10,(2.0*n*4)/best/1e9);
    free(x);free(y);
  }
}
